"""The HTTP routes ``app.py`` mounts beside the page: the chat route and the media route."""

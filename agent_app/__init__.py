"""Agent Session Shell: a video creator's chat with an AI assistant that runs tools on the project's media.

Importing the package installs the log redaction (:mod:`agent_app.log_redaction`): whatever entry point
runs the app (``app.py``, the page, a test), no log record of the process can carry a configured key.
"""

from agent_app import log_redaction

log_redaction.install()

"""The project's own tool plugins, registered by module name (``agent_app.tool_plugins.BUILTIN_PLUGINS``);
installed packages add theirs through the ``agent_app.tools`` entry-point group."""

"""Agent Session Shell: a video creator's chat with an AI assistant that runs tools on the project's media."""

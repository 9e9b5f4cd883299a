"""The `tracewh` command: thin typer wrappers over the library."""

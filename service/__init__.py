"""The HTTP service (`tracewh serve`)."""

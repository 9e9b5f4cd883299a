"""The web page of `tracewh serve` at `/`: install_web(app, config, warehouse) adds it to the service."""

from .routes import install_web

__all__ = ["install_web"]

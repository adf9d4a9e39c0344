"""StreamBed: capacity planning for distributed stream processing."""

__version__ = "0.1.0"

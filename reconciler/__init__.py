"""reconciler: declarative infrastructure-as-code for the web-app deployment platform."""

__version__ = "0.1.0"

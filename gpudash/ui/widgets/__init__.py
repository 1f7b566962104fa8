"""The app's widgets, beside the panels they hold."""

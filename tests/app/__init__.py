"""The app tier."""

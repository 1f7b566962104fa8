"""The ssh tier."""

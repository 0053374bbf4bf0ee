"""Shared matplotlib style and figure saving (PNG + SVG)."""

"""Shared matplotlib style, simulated series with their intervals, figure saving (PNG, SVG, PDF)."""

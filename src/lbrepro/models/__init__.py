"""One module per model: the single home of its equations."""

"""Mean-field machinery shared by all models: population processes and the refined 1/N term."""

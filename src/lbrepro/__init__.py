"""lbrepro — reproducible figures and claim checks for randomized load balancing."""

__version__ = "0.2.0"

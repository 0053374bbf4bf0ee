"""What every model shares: errors, random streams, statistics, equilibrium solving, I/O, claims."""

"""Statistics shared by every component: bootstrap intervals, rank correlations."""

"""Item generators per component (and rendering of the images a component draws)."""

"""C2 scoring: the five-step parser, similarity kernels, cags and its companions."""

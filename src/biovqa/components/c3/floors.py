"""Transitional: the floor fits live in :mod:`.kernels`; this module goes once the summary reads
them there."""

from biovqa.components.c3.kernels import (ACC20, TOL, best_constant, common_prefix, constant_code, hit20,  # noqa: F401
                                          majority, mean_normalised_box, modal_counts)

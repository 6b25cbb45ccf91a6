"""Benchmark machinery, kept apart from what users compose: the arithmetic groups' training, results cache and
captions, and speed rows (:mod:`~neurosym.benchmarking.arithmetic_training`,
:mod:`~neurosym.benchmarking.arithmetic_results`, :mod:`~neurosym.benchmarking.arithmetic_speed`), the PVR runs
and sweeps (:mod:`~neurosym.benchmarking.pvr_runs`, :mod:`~neurosym.benchmarking.pvr_sweeps`), and the timing of
training steps, solvers and abduction (:mod:`~neurosym.benchmarking.timing`,
:mod:`~neurosym.benchmarking.speed_steps`, :mod:`~neurosym.benchmarking.solver_speed`,
:mod:`~neurosym.benchmarking.abduction_speed`). The runners of :mod:`neurosym.experiments` call them."""

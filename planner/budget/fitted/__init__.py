"""The fit of the blind budget's constants on real start-up logs, and calibration from a user's log.

The constants themselves live in ../budget_constants.py (every budget term reads them; this
package only produces them), so imports run one way: fitted -> budget.

- observation.py: `BudgetObservation`, what one start-up log says about the fitted terms, built
  from hkv's own plan of that start-up and the figures the log printed.
- fit.py: `fit_budget_constants`, the procedure (medians of residuals and a least-squares fit of
  the graph estimate; the residual band from an inner leave-one-source-out), so that a benchmark
  can re-fit without the records of the source it scores. `SHIPPED` is its result on every shared
  start-up (benchmarks/bench_blind_budget.py --refit regenerates it).
- calibration.py: one start-up log of the user's turned into constants for that machine and release.
"""

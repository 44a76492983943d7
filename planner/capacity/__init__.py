"""The capacity of a layout: what a sized layout holds and how many requests it runs at once.

Owns, given a Layout (planner/layout.py) and the plan's engine settings: the capacity figures
`hkv plan` prints and vLLM's capacity log lines (`capacity`), the same figures at both ends of an
estimated budget's band (`band`; plan.py rebuilds the layouts there), the sustained-concurrency
prediction (`sustained`: how many max-length requests run at once without a preemption) with its
count model (`sustained_counts`) and the walk its probes share (`sustained_walk`), what one request
holds of each pool (`request_footprint`), and a workload's lengths reduced to what sizes the hkv
layout (`workload_lengths`). Nothing here builds a layout or sizes a budget (planner/ and
planner/budget/ do); it reads theirs. Pure: no I/O.
"""

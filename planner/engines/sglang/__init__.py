"""SGLang as the planner sees it: the server arguments that change sizing (`server_args`), its
release rules (`rules`), the default `mem_fraction_static` (`mem_fraction`), the profiled rest it
sizes pools from (`budget`), the bytes one token or one request state costs (`cell_bytes`,
`mamba_state`), the pools it resolves (`pools`: full, hybrid sliding-window, Mamba/GDN state
slots, `max_running_requests`) and the start-up lines it prints. The start-up log reader (`log`)
and the launch command (`launch_command`) live here too. Pure Python: never imports torch.

Every formula is hkv's own reading of SGLang's sizing code (0.5.23 and the older releases
`rules` names), checked against SGLang itself by the oracle tests in tests/oracle/."""

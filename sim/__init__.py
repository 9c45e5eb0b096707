"""The labelled mesh simulator: realistic raw tool outputs with injected pathologies, and their labels.

``pathwatch simulate --out DIR --seed N [--hosts H --days D --start T]`` (see
:func:`pathwatch.sim.command.run_simulate`) takes a seed, a mesh size (default 7 hosts: 42
directed paths), a period (default 21 days from 2026-01-05T00:00:00Z) and the test cadences
(:class:`pathwatch.sim.config.Cadences`: latencybg every 10 min with 6000 packets, iperf3
every 2 h per path with a few minutes of slip and one run per host at a time, traces every
20 min, an extra hourly tracepath on hosts that run both tools). It writes into ``DIR``:

- ``raw.jsonl``: one raw envelope a line, ascending in ``collected_at``, each payload in its
  tool's real format: raw ``iperf3 -J`` or pscheduler throughput, pscheduler latencybg
  (powstream histograms), pscheduler trace (traceroute / paris-traceroute with AS numbers)
  and tracepath text. Hosts differ in what their collector publishes (``Host.profile``:
  pscheduler only; raw iperf3 + tracepath; pscheduler + both trace tools), in archive shape,
  tool versions, MTU (1500/9000), NIC (1-100 Gb/s) and congestion control.
- ``labels.jsonl``: one line per (pathology, path): ``{kind, source, destination, start,
  end, params}``; source is the sender of the measured traffic, times RFC 3339 Z, ``end``
  null when the episode lasts to the end of the data. A measurement is affected when its
  test starts at or after ``start`` (and before ``end``). ``start`` is the onset instant;
  for ``diurnal_saturation`` the start of the first busy window at or after the onset, for
  ``rising_loss`` the start of the loss ramp (0 there), for ``no_data`` the moment the
  source's collector stops publishing, for ``clock_error`` the moment the host's clock goes
  bad (one label per latency path to or from it).
- ``mesh.json``: hosts, paths (RTT, capacity, typical rate, MTU, hops, ECMP hops),
  cadences, seed, period and the labelled episodes, for people and plots.

Healthy paths carry noise on purpose: run-to-run throughput variation, slow-start ramps,
mild daily swings, single bad runs and single lossy latency windows, rare packet loss,
silent routers and dropped probes, ECMP alternation, one-trace route blips, PMTUD that works
across a 1500-byte hop, NIC-pinned flat throughput. On top, by default, the benign behaviour
catalogue (:mod:`pathwatch.sim.benign`, parameters drawn per seed): busy-hour standing queues
that raise the one-way delay floor, partly answering, rate-limiting and slow-path routers,
asymmetric routes, NTP steps and slews within the clock-error estimate, host reboots and
maintenance windows, CPU-loaded hosts, cross-traffic bursts, skipped and late tests — none of
them labelled — and one labelled pathology that is there from the first day: an untuned host
(``window_limited`` from the data start). ``SimConfig(benign=False)`` (``--no-benign``) writes
the meshes of before the catalogue, byte for byte; ``SimConfig(benign_only=True)``
(``--benign-only``) the benign-only family: no pathology, no labels, every alarm is false.

Modules, from plan to bytes: ``config`` (options) → ``sites``/``routes``/``mesh`` (topology)
→ ``benign`` (the catalogue) → ``pathologies`` (``episode.Episode`` each) → ``schedule`` (test times) → ``effects``
(episodes as per-measurement modifiers) → ``measure_latency``/``measure_throughput``/``measure_trace``
(numbers, tool-neutral) → ``render_pscheduler``/``render_iperf3``/``render_tracepath``
(payloads) → ``generate`` (envelopes in time order, pure) → ``writer`` (files) →
``command`` (the CLI). Same seed and options, same bytes.

>>> from pathwatch.sim.config import SimConfig
>>> from pathwatch.sim.generate import plan
>>> sim = plan(SimConfig(seed=1))
>>> len(sim.mesh.paths), len({e.kind for e in sim.episodes})
(42, 11)
"""

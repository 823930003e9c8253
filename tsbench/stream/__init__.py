"""`tsbench stream`: writes generated on the fly, at a chosen shape, concurrency, batch,
rate or delay, for a duration or a number of points per series (inch's way of loading,
beside the bulk load of phase 2). source.py makes each writer's batches in the C core,
pace.py says when each goes, stats.py keeps the per-second figures (latency histograms
that merge exactly), run.py runs the writers and verifies the count at the end."""

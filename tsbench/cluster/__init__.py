"""Client slots spread over a Dask cluster (phases 2 and 4: `load --cluster`, `stream
--cluster`): one task per Dask worker, each loading its exact share with its own
asyncio writers and reporting its per-second counters back; the driver merges them on
its clock and verifies the count once. address.py opens the cluster, facts.py checks
the workers, slot.py is what runs on a worker, drive.py submits and watches the slots,
merge.py puts their figures together; loading.py, streaming.py and querying.py are each
phase's driver side, called from above (experiments/session.py)."""

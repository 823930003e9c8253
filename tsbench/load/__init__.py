"""Phase 2, load: reaching a target, the writers' pump, and verifying afterwards that the
database holds every point; what load and stream share lives here once."""

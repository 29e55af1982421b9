"""A run's results: the request table and instance log the simulator fills
(`request_table`, `instance_log`), the summary (`summary`), the run directory they are
published in (`run_dir`), and the schema the writers and `analysis` share (`schema`)."""

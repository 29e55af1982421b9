"""The event loop over the model: arrivals, routing through the queue discipline and the
placement policy, cold starts, keep-alive, migrations and preemptions (`simulator`), the
request table it fills (`request_table`), and the auditor of its books (`invariants`)."""

"""Token migration, for real: a small Llama-like decoder with seeded random weights
(`model`) and the live migration of a decoding request between two processes by sending
its tokens and recomputing the KV cache (`token_migration`)."""

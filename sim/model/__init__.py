"""The cluster as SimPy events: the clock, servers with their GPUs, checkpoint caches,
links and host cores, instances and their staged start-ups, loads from every tier (peers
included), execute-while-load, sleeping engines, live migration, the cluster view the
policies read, its indexes, and the instance log. It reads only frozen values
(`sim.spec`): nothing here parses a file."""

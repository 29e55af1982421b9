"""A remote object store on loopback, and the client that downloads checkpoints from it.

`store`: an HTTP server over a directory that answers Range requests and paces each
simulated server's responses to its rate (the simulator's per-server `network` link);
`command` is its face, `python -m calibration.remote --root DIR --rate BYTES_PER_S`,
and `running` starts that as a subprocess for as long as a block runs. `client`:
`download` fetches a checkpoint directory with ranged GETs into an O_DIRECT file and
renames it into place. Nothing here is imported eagerly: the store's process needs only
tornado, not torch.
"""

"""thaw's checkpoint format and its loader.

The format (`format`): tensors in forward-pass order (`ordering`), each 4 KiB aligned in
one flat blob beside a small JSON index, with checksums (`checksum`); written by
`writer`, converted from safetensors or torch files by `convert` (reading `sources`),
checked by `verify`. The loader (`reader`) plans aligned reads (`plan`) and streams them
through O_DIRECT (`direct_io`) into pinned staging buffers (`staging`, `buffers`) onto the
device, or maps a file the page cache already holds (`mapped`, `pagecache`).
"""

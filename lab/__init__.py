"""A network lab of namespaces on this machine: real kernels, real tools, injected faults (``pathwatch lab``)."""

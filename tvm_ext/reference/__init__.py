"""Reference outputs for the bundle's self-test from an independent runtime (outputs.py), each run a
process of its own (runtimes.py) forked by a long-lived server (server.py); TVM's Relax VM on the host
(host_vm.py). Kept free of imports: the server's children import runtimes.py through this package."""

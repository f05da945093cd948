"""The compile command's processes (stdlib only, imported before anything else of ours): its exit codes and
signals (command_process.py) and the forked workers codegen runs on (forked_workers.py)."""

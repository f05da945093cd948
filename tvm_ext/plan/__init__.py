"""The lowered module -> the ExecutionPlan (extract_plan.py), the MACs counted per kernel before its
schedule (macs.py), and each subgraph's compute unit (unit_assignment.py, no TVM)."""

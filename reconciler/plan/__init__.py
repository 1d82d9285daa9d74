"""Planning: the plan value classes, the planner, live reads, targets and plan files."""

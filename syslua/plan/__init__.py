"""Planning: the execution DAG and the comparison of the manifest with the machine."""

"""The training jobs: the rings their reporters write (one per rank), grouped into jobs and DDP ranks,
or the same steps rebuilt from the Prometheus series of other nodes."""

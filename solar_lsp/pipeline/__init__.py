"""The pipeline: one file through discovery, a frontend, the shared tail (bounds, verification)
into a report; also corpus coverage and the roofline plot."""

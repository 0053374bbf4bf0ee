"""The HTML report: provenance, runtimes and Jinja2 rendering from the artifact registry."""

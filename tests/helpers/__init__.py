"""The tests' helpers, apart from the tests: a host's launch configuration and its rendered scripts (launch_helpers),
verl's real config schema and checks (hydra_schema, with verl's DAPO overlay and checks in verl_config/), an AWX job
without AWX (awx_job). Imported as `helpers.<module>` (pytest.ini puts tests/ on the path)."""

from tests.host.conftest import workspace  # noqa: F401  (fixture)

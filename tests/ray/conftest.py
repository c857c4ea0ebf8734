"""One local Ray cluster with two raylets for the session (docs/how-to/scale.md, tested on one machine), on loopback only."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# both nodes hold the keys of the test's quota domain (a machine declares the domains whose keys it has)
QUOTA = "test:shared"
# Ray on Linux resolves 127.0.0.1 to the machine's outward address; this setting (read when ray is first imported,
# so set before any test module here imports it, and inherited by every Ray process) keeps them all on loopback
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# The cluster is the kind a plain `ray start --head` makes: it asks for a token (Ray's default wherever one exists),
# and its nodes register an address other than the one the head is reached by (there the outward interface; here
# 127.0.0.2, still loopback). A fresh process given only a home whose ~/.ray holds the token must join it.
NODE_IP = "127.0.0.2"
RAY_HOME = Path(tempfile.mkdtemp(prefix="searchtrace-ray-home-"))
TOKEN = RAY_HOME / ".ray" / "auth_token"
TOKEN.parent.mkdir()
TOKEN.write_text(secrets.token_hex(32))
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN_PATH"] = str(TOKEN)
atexit.register(shutil.rmtree, RAY_HOME, True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A head and a second raylet, started here and torn down at session end; the session's driver joined to it."""
    pytest.importorskip("ray", reason="the Ray tests need the ray extra: pip install 'searchtrace[ray]'")
    import ray
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "node_ip_address": NODE_IP, "resources": {f"quota:{QUOTA}": 1},
            "object_store_memory": 100 * 1024 * 1024}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, _node_ip_address=NODE_IP, namespace="searchtrace", log_to_driver=False, logging_level="WARNING")
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()


def kill_when_under_way(killed: dict[str, Any], shard: int = 1, after: int = 3) -> Callable[[dict[int, Any]], None]:
    """An `on_started` that kills shard `shard`'s actor once it has finished `after` cells or items (noting when in
    `killed["at"]`): the killed shard has done some of its work, not all."""
    def started(actors: dict[int, Any]) -> None:
        import ray

        def watch() -> None:
            while ray.get(actors[shard].progress.remote()) < after:
                time.sleep(0.02)
            ray.kill(actors[shard])
            killed["at"] = time.monotonic()

        threading.Thread(target=watch, daemon=True).start()

    return started

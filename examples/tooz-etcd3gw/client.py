#!/usr/bin/python3
"""A locksim client in Python: OpenStack's tooz over its etcd3gw driver
(Debian's python3-tooz and python3-etcd3gw), as locksim's etcd lock.

It is examples/tooz/client.py offering the one driver tooz-etcd3gw:
tooz's two etcd drivers both stand in for etcd, and a program names each
lock it stands in for once, so this folder is that program's second
findings subject. The harness starts it as a scenario's client_cmd:

    client_cmd: [examples/tooz-etcd3gw/client.py]
"""

import os
import sys

client = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "tooz", "client.py")
os.execv(sys.executable, [sys.executable, client, "--drivers", "tooz-etcd3gw"] + sys.argv[1:])

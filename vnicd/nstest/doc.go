// Package nstest is a lab of network namespaces for privileged tests: named
// namespaces with loopback up, veth pairs and bridged segments between them,
// commands and Go functions run inside them, all removed when the test ends,
// pass or fail.
//
// Every namespace and link it makes carries the run's id (RunID), which
// encodes the test process's pid; a run that crashed before its cleanups ran
// leaves namespaces that Sweep, called by every NewNS, removes once their
// owner is dead. Links live only inside the lab's namespaces and go with
// them; nothing is made in the test's own namespace.
//
// Tests start with RequireRoot and RequireTools (and RequireKernel once
// they have tried a kernel feature), which skip with a reason
// when the machine can't run them; with CI=true or OPAVNIC_REQUIRE_E2E=1 a
// missing tool fails the test instead, and with OPAVNIC_REQUIRE_E2E=1 so
// does a missing root, so that a run meant to exercise the lab can't pass by
// skipping it. RequireKernel skips even in CI (a kernel module cannot be
// installed by a script); OPAVNIC_REQUIRE_KERNEL=1 makes it fail.
//
// It needs iproute2's ip(8): namespaces are made and entered with
// `ip netns`, as an operator would, so that commands see the namespace's own
// /sys and /etc/netns.
package nstest

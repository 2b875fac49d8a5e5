// Package e2etest is the one harness of the end-to-end tests of vnicd,
// opafm, vnicctl and vnic-cni. It builds their binaries once per test
// binary (Bin, BinDir, Main), writes vnicd's host configs (Host, VNIC,
// Netdev), runs daemons in the namespaces of package nstest and reads them
// over their control socket (Daemon: Launch, Start, Stop, Restart, WaitUp,
// WaitVNICs, Counters, HFIStatus), and checks traffic across them (Ping,
// Reaches, Silent, Iperf, LastLines).
//
// It is a test-support package: its functions take a testing.TB and fail
// the test on an error of the harness itself. Namespaces, links and the
// processes started in them are nstest's, removed when the test ends; a
// Daemon started without a namespace (one with no VNICs, which needs no
// root) is killed by the test's cleanup if it still runs. Every wait is
// bounded, through package waitfor.
package e2etest

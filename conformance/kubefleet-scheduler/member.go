package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fleetTools runs Fleet's own programs for a scenario's member: fleetctl
// (a bootstrap token) and fleet-agent, from the directory FLEET_BIN, with
// FLEET_ENDPOINTS and FLEET_TLS_DIR (what fleetctl reads) as the scripts
// that start Fleet export them.
type fleetTools struct {
	bin, endpoints, work string
}

func newFleetTools() (*fleetTools, error) {
	t := &fleetTools{bin: os.Getenv("FLEET_BIN"), endpoints: os.Getenv("FLEET_ENDPOINTS")}
	if t.bin == "" || t.endpoints == "" || os.Getenv("FLEET_TLS_DIR") == "" {
		return nil, fmt.Errorf("FLEET_BIN, FLEET_ENDPOINTS and FLEET_TLS_DIR must be set (a scenario's member runs fleet-agent)")
	}
	work, err := os.MkdirTemp("", "kubefleet-scheduler-members-")
	if err != nil {
		return nil, err
	}
	t.work = work
	return t, nil
}

// tools is set when the run has scenarios with members.
var tools *fleetTools

// runningAgent is a member's fleet-agent process.
type runningAgent struct {
	cmd *exec.Cmd
	log *os.File
}

// joinMember makes a scenario's member on both sides before its placements
// are made: on Fleet a MemberCluster with its labels and taints and an
// agent that joins with a bootstrap token (waited for until it is joined,
// healthy and reports its properties); on KubeFleet the same MemberCluster
// with that status, as the pool's. Returns the agent and the KubeFleet
// MemberCluster's resourceVersion.
func joinMember(ctx context.Context, m *member, kf, fleet *side) (*runningAgent, string, error) {
	var like poolCluster
	for _, c := range pool {
		if c.Name == m.Like {
			like = c
		}
	}
	object := map[string]interface{}{
		"apiVersion": clusterGroup + "/v1beta1",
		"kind":       "MemberCluster",
		"metadata":   map[string]interface{}{"name": m.Name, "labels": stringMap(m.Setup.Labels)},
		"spec":       map[string]interface{}{"heartbeatPeriodSeconds": int64(1)},
	}
	if len(m.Setup.Taints) > 0 {
		object["spec"].(map[string]interface{})["taints"] = deepCopyValue(m.Setup.Taints)
	}
	if err := fleet.create(ctx, gvrMember, object); err != nil {
		return nil, "", err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(tools.bin, "fleetctl"), "token", "create", "--cluster", m.Name, "--ttl", "10m").Output()
	if err != nil {
		return nil, "", fmt.Errorf("fleetctl token create --cluster %s: %w", m.Name, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return nil, "", fmt.Errorf("fleetctl token create --cluster %s printed %q", m.Name, out)
	}
	args := []string{"--cluster", m.Name, "--hub", tools.endpoints, "--data-dir", filepath.Join(tools.work, m.Name),
		"--token", lines[0], "--ca-fingerprint", lines[1],
		"--sim-nodes", fmt.Sprint(like.Nodes), "--sim-capacity", like.Capacity, "--sim-allocatable", like.Allocatable}
	if like.Cost != "" {
		args = append(args, "--sim-cost", like.Cost)
	}
	log, err := os.Create(filepath.Join(tools.work, m.Name+".log"))
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(filepath.Join(tools.bin, "fleet-agent"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, "", fmt.Errorf("start fleet-agent for %s: %w", m.Name, err)
	}
	agent := &runningAgent{cmd: cmd, log: log}
	var status map[string]interface{}
	err = poll(ctx, 60*time.Second, "Fleet's MemberCluster "+m.Name+" joined, healthy, with properties", func() (bool, string, error) {
		u, err := fleet.get(ctx, gvrMember, "", m.Name)
		if err != nil || u == nil {
			return false, fmt.Sprint(err), err
		}
		status, _, _ = unstructured.NestedMap(u.Object, "status")
		conditions, _, _ := unstructured.NestedSlice(status, "conditions")
		props, _, _ := unstructured.NestedMap(status, "properties")
		available, _, _ := unstructured.NestedMap(status, "resourceUsage", "available")
		ok := isTrue(condition(conditions, "Joined")) && isTrue(condition(conditions, "Healthy")) && len(props) > 0 && len(available) > 0
		return ok, fmt.Sprint(status), nil
	})
	if err != nil {
		agent.stop()
		return nil, "", err
	}
	props, _, _ := unstructured.NestedMap(status, "properties")
	usage, _, _ := unstructured.NestedMap(status, "resourceUsage")
	object = deepCopy(object)
	object["spec"] = map[string]interface{}{
		"identity":               map[string]interface{}{"kind": "ServiceAccount", "name": "fleet-member-agent-" + m.Name, "namespace": "fleet-system"},
		"heartbeatPeriodSeconds": int64(60),
	}
	if len(m.Setup.Taints) > 0 {
		object["spec"].(map[string]interface{})["taints"] = deepCopyValue(m.Setup.Taints)
	}
	object["status"] = memberStatus(props, usage, time.Now())
	if err := kf.ensureNamespace(ctx, "fleet-member-"+m.Name); err != nil {
		agent.stop()
		return nil, "", err
	}
	if err := kf.create(ctx, gvrMember, object); err != nil {
		agent.stop()
		return nil, "", err
	}
	u, err := kf.get(ctx, gvrMember, "", m.Name)
	if err != nil || u == nil {
		agent.stop()
		return nil, "", fmt.Errorf("kubefleet: MemberCluster %s: %v", m.Name, err)
	}
	return agent, u.GetResourceVersion(), nil
}

// silenceMember stops a member's agent and waits until Fleet counts it
// unhealthy (no heartbeat for three periods); on KubeFleet, whose member
// agent is the oracle, the member's last heartbeat becomes ten minutes
// old (KubeFleet's checker allows five). Then both sides' MemberCluster
// get the member's new labels, so that both schedulers look again (a
// cluster becoming ineligible alone moves neither KubeFleet's scheduler
// nor a placement that has its clusters). Returns the KubeFleet
// MemberCluster's resourceVersion.
func silenceMember(ctx context.Context, m *member, agent *runningAgent, kf, fleet *side) (string, error) {
	if err := agent.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return "", fmt.Errorf("stop the agent of %s: %w", m.Name, err)
	}
	err := poll(ctx, 30*time.Second, "Fleet's MemberCluster "+m.Name+" unhealthy", func() (bool, string, error) {
		u, err := fleet.get(ctx, gvrMember, "", m.Name)
		if err != nil || u == nil {
			return false, fmt.Sprint(err), err
		}
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		c := condition(conditions, "Healthy")
		return c != nil && c.Status != "True", fmt.Sprint(c), nil
	})
	if err != nil {
		return "", err
	}
	stale := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	for attempt := 0; ; attempt++ {
		u, err := kf.get(ctx, gvrMember, "", m.Name)
		if err != nil || u == nil {
			return "", fmt.Errorf("kubefleet: MemberCluster %s: %v", m.Name, err)
		}
		agents, _, _ := unstructured.NestedSlice(u.Object, "status", "agentStatus")
		for _, a := range agents {
			if am, ok := a.(map[string]interface{}); ok {
				am["lastReceivedHeartbeat"] = stale
			}
		}
		if err := unstructured.SetNestedSlice(u.Object, agents, "status", "agentStatus"); err != nil {
			return "", err
		}
		_, err = kf.resource(gvrMember, "").UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if attempt > 20 {
			return "", fmt.Errorf("kubefleet: heartbeat of %s: %w", m.Name, err)
		}
	}
	var version string
	err = applyBoth(kf, fleet, func(sd *side) error {
		v, err := sd.setMember(ctx, m.Name, m.Relabel, m.Setup.Taints, fleetOwnLabel)
		if sd == kf {
			version = v
		}
		return err
	})
	return version, err
}

// removeMember deletes a member's MemberCluster on both sides and waits
// until it is gone.
func removeMember(ctx context.Context, m *member, kf, fleet *side) error {
	return applyBoth(kf, fleet, func(sd *side) error {
		if err := sd.remove(ctx, gvrMember, "", m.Name); err != nil {
			return err
		}
		return poll(ctx, 60*time.Second, sd.name+": MemberCluster "+m.Name+" gone", func() (bool, string, error) {
			u, err := sd.get(ctx, gvrMember, "", m.Name)
			return u == nil, "", err
		})
	})
}

// stop ends the agent process (resumed first if it was stopped).
func (a *runningAgent) stop() {
	if a == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGCONT)
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	a.log.Close()
}

// tail is the end of the agent's log, for failures.
func (a *runningAgent) tail() string {
	f, err := os.Open(a.log.Name())
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
		if len(lines) > 10 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func isTrue(c *cond) bool { return c != nil && c.Status == "True" }

func stringMap(m map[string]string) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

package plugin

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// SelectionVariable names, in a plugin's environment, which of its setup's controllers it runs:
// an operator's main sets up several, and each runs as a plugin of its own, loaded from the same
// module with this variable set (the host's config file or WasmReconciler `env`).
const SelectionVariable = "WASMOP_CONTROLLER"

// selected is the controller the plugin runs: the setup's only one, or the one of several that
// selection names. Of several, it also returns the selected one's name, which the plugin's
// name takes as a suffix, and whether it is the first (the plugin that serves the webhooks).
func (m *Manager) selected(selection string) (c *Controller, suffix string, first bool, err error) {
	all := m.Controllers()
	switch {
	case len(all) == 0:
		return nil, "", false, fmt.Errorf("the setup completed no controller: call ctrl.NewControllerManagedBy(mgr).For(…).Complete(r)")
	case len(all) == 1 && selection == "":
		return all[0], "", true, nil
	}
	names := make([]string, len(all))
	for i, c := range all {
		if names[i], err = controllerName(c, m); err != nil {
			return nil, "", false, err
		}
	}
	i := slices.Index(names, selection)
	switch {
	case selection == "":
		return nil, "", false, fmt.Errorf("the setup completed %d controllers (%s) and a plugin runs one: load the module once per controller, with %s=<name> in each one's environment",
			len(all), strings.Join(names, ", "), SelectionVariable)
	case i < 0:
		return nil, "", false, fmt.Errorf("%s=%q names none of the setup's controllers (%s)", SelectionVariable, selection, strings.Join(names, ", "))
	}
	return all[i], label(names[i]), i == 0, nil
}

// controllerName is c's name as controller-runtime gives it: the builder's Named, else its
// primary kind in lower case.
func controllerName(c *Controller, m *Manager) (string, error) {
	if c.Name != "" || c.For == nil {
		return c.Name, nil
	}
	gvk, err := apiutil.GVKForObject(c.For, m.scheme)
	if err != nil {
		return "", fmt.Errorf("the reconciled kind: %w", err)
	}
	return strings.ToLower(gvk.Kind), nil
}

// label is name as part of a plugin's name: lower case, every other character than a letter,
// digit or dash a dash.
func label(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, name)
}

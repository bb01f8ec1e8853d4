package guest

import (
	"errors"
	"fmt"
	"testing"

	"wasmop.dev/guest/internal/wit"
)

func TestHostErrorsMatchWithErrorsIsAndAs(t *testing.T) {
	status := wit.Status{Code: 403, Reason: "Forbidden", Message: "no"}
	err := fmt.Errorf("writing: %w", FromWIT(wit.Error{
		Case:      wit.ErrorForbidden,
		Forbidden: wit.Tuple2[wit.DeniedBy, wit.Status]{F0: wit.DeniedByDeclaredPermissions, F1: status},
	}))
	var forbidden *Forbidden
	if !errors.As(err, &forbidden) || forbidden.DeniedBy != DeniedByDeclaredPermissions || forbidden.Code != 403 {
		t.Fatalf("errors.As = %v", forbidden)
	}
	if !errors.Is(err, ErrForbidden) || errors.Is(err, ErrNotFound) {
		t.Fatal("errors.Is matches the wrong sentinel")
	}
}

func TestEveryHostErrorRoundTrips(t *testing.T) {
	sentinels := []error{ErrNotFound, ErrConflict, ErrAlreadyExists, ErrForbidden, ErrInvalid, ErrTimeout, ErrUnavailable, nil}
	for c, sentinel := range sentinels {
		e := wit.Error{Case: wit.ErrorCase(c)}
		err := FromWIT(e)
		if sentinel != nil && !errors.Is(err, sentinel) {
			t.Errorf("case %d: %T does not match %v", c, err, sentinel)
		}
		if back := ToWIT(err); back.Case != e.Case {
			t.Errorf("case %d came back as %d", c, back.Case)
		}
	}
}

func TestIgnoreNotFoundKeepsOtherErrors(t *testing.T) {
	if IgnoreNotFound(&NotFound{}) != nil {
		t.Error("NotFound was not ignored")
	}
	if IgnoreNotFound(&Conflict{}) == nil {
		t.Error("Conflict was ignored")
	}
}

func TestStatusOfFindsTheStatusOfAWrappedHostError(t *testing.T) {
	err := fmt.Errorf("reading: %w", &Conflict{Status{Code: 409, Reason: "Conflict", Message: "stale"}})
	s, ok := StatusOf(err)
	if !ok || s.Code != 409 || s.Reason != "Conflict" || s.Message != "stale" {
		t.Fatalf("StatusOf = %+v, %v", s, ok)
	}
	if _, ok := StatusOf(errors.New("plain")); ok {
		t.Fatal("a plain error has no status")
	}
}

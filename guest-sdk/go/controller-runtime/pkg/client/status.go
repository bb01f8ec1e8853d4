package client

import (
	"context"
	"fmt"

	guestclient "wasmop.dev/guest/client"
)

func (c *hostClient) Status() SubResourceWriter { return c.SubResource("status") }

func (c *hostClient) SubResource(subResource string) SubResourceClient {
	return &subResourceClient{c: c, name: subResource}
}

// subResourceClient writes the status subresource; every other subresource is refused.
type subResourceClient struct {
	c    *hostClient
	name string
}

func (s *subResourceClient) check(what string) error {
	if s.name != "status" {
		return fmt.Errorf("%s of the %s subresource: %w (only status is)", what, s.name, errUnsupported)
	}
	return nil
}

func (s *subResourceClient) Get(context.Context, Object, Object, ...SubResourceGetOption) error {
	return fmt.Errorf("reading the %s subresource: %w (read the object from the cache)", s.name, errUnsupported)
}

func (s *subResourceClient) Create(context.Context, Object, Object, ...SubResourceCreateOption) error {
	return fmt.Errorf("creating the %s subresource: %w", s.name, errUnsupported)
}

func (s *subResourceClient) Update(_ context.Context, obj Object, opts ...SubResourceUpdateOption) error {
	if err := s.check("an update"); err != nil {
		return err
	}
	var o SubResourceUpdateOptions
	for _, opt := range opts {
		opt.ApplyToSubResourceUpdate(&o)
	}
	switch {
	case len(o.DryRun) > 0:
		return fmt.Errorf("status update with dry run: %w", errUnsupported)
	case o.SubResourceBody != nil:
		return fmt.Errorf("status update with a separate body: %w", errUnsupported)
	}
	return s.c.write(obj, true, guestclient.UpdateStatusJSON)
}

func (s *subResourceClient) Patch(_ context.Context, obj Object, patch Patch, opts ...SubResourcePatchOption) error {
	if err := s.check("a patch"); err != nil {
		return err
	}
	var o SubResourcePatchOptions
	for _, opt := range opts {
		opt.ApplyToSubResourcePatch(&o)
	}
	if o.SubResourceBody != nil {
		return fmt.Errorf("status patch with a separate body: %w", errUnsupported)
	}
	return s.c.patch(obj, patch, o.PatchOptions, guestclient.PatchStatusJSON)
}

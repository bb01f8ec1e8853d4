/**
 * The built-in kinds plugins use most, each both a value (the {@link Kind} to pass to `cache` and
 * `client`) and a type (its objects, from `kubernetes-types`). Other kinds: {@link defineKind}.
 */
import type * as core from 'kubernetes-types/core/v1';
import type * as apps from 'kubernetes-types/apps/v1';
import type * as batch from 'kubernetes-types/batch/v1';
import type * as networking from 'kubernetes-types/networking/v1';
import type * as rbac from 'kubernetes-types/rbac/v1';
import type * as policy from 'kubernetes-types/policy/v1';

import { defineKind, type Kind } from './kind.ts';

/** The `v1` Pod kind. */
export const Pod: Kind<core.Pod> = defineKind('v1', 'Pod');
/** A `v1` Pod object. */
export type Pod = core.Pod;

/** The `v1` Service kind. */
export const Service: Kind<core.Service> = defineKind('v1', 'Service');
/** A `v1` Service object. */
export type Service = core.Service;

/** The `v1` ConfigMap kind. */
export const ConfigMap: Kind<core.ConfigMap> = defineKind('v1', 'ConfigMap');
/** A `v1` ConfigMap object. */
export type ConfigMap = core.ConfigMap;

/** The `v1` Secret kind. */
export const Secret: Kind<core.Secret> = defineKind('v1', 'Secret');
/** A `v1` Secret object. */
export type Secret = core.Secret;

/** The `v1` Namespace kind. */
export const Namespace: Kind<core.Namespace> = defineKind('v1', 'Namespace');
/** A `v1` Namespace object. */
export type Namespace = core.Namespace;

/** The `v1` ServiceAccount kind. */
export const ServiceAccount: Kind<core.ServiceAccount> = defineKind('v1', 'ServiceAccount');
/** A `v1` ServiceAccount object. */
export type ServiceAccount = core.ServiceAccount;

/** The `v1` PersistentVolumeClaim kind. */
export const PersistentVolumeClaim: Kind<core.PersistentVolumeClaim> = defineKind('v1', 'PersistentVolumeClaim');
/** A `v1` PersistentVolumeClaim object. */
export type PersistentVolumeClaim = core.PersistentVolumeClaim;

/** The `v1` Node kind. */
export const Node: Kind<core.Node> = defineKind('v1', 'Node');
/** A `v1` Node object. */
export type Node = core.Node;

/** The `v1` Event kind. */
export const Event: Kind<core.Event> = defineKind('v1', 'Event');
/** A `v1` Event object. */
export type Event = core.Event;

/** The `apps/v1` Deployment kind. */
export const Deployment: Kind<apps.Deployment> = defineKind('apps/v1', 'Deployment');
/** A `apps/v1` Deployment object. */
export type Deployment = apps.Deployment;

/** The `apps/v1` StatefulSet kind. */
export const StatefulSet: Kind<apps.StatefulSet> = defineKind('apps/v1', 'StatefulSet');
/** A `apps/v1` StatefulSet object. */
export type StatefulSet = apps.StatefulSet;

/** The `apps/v1` DaemonSet kind. */
export const DaemonSet: Kind<apps.DaemonSet> = defineKind('apps/v1', 'DaemonSet');
/** A `apps/v1` DaemonSet object. */
export type DaemonSet = apps.DaemonSet;

/** The `apps/v1` ReplicaSet kind. */
export const ReplicaSet: Kind<apps.ReplicaSet> = defineKind('apps/v1', 'ReplicaSet');
/** A `apps/v1` ReplicaSet object. */
export type ReplicaSet = apps.ReplicaSet;

/** The `batch/v1` Job kind. */
export const Job: Kind<batch.Job> = defineKind('batch/v1', 'Job');
/** A `batch/v1` Job object. */
export type Job = batch.Job;

/** The `batch/v1` CronJob kind. */
export const CronJob: Kind<batch.CronJob> = defineKind('batch/v1', 'CronJob');
/** A `batch/v1` CronJob object. */
export type CronJob = batch.CronJob;

/** The `networking.k8s.io/v1` Ingress kind. */
export const Ingress: Kind<networking.Ingress> = defineKind('networking.k8s.io/v1', 'Ingress');
/** A `networking.k8s.io/v1` Ingress object. */
export type Ingress = networking.Ingress;

/** The `networking.k8s.io/v1` NetworkPolicy kind. */
export const NetworkPolicy: Kind<networking.NetworkPolicy> = defineKind('networking.k8s.io/v1', 'NetworkPolicy');
/** A `networking.k8s.io/v1` NetworkPolicy object. */
export type NetworkPolicy = networking.NetworkPolicy;

/** The `rbac.authorization.k8s.io/v1` Role kind. */
export const Role: Kind<rbac.Role> = defineKind('rbac.authorization.k8s.io/v1', 'Role');
/** A `rbac.authorization.k8s.io/v1` Role object. */
export type Role = rbac.Role;

/** The `rbac.authorization.k8s.io/v1` RoleBinding kind. */
export const RoleBinding: Kind<rbac.RoleBinding> = defineKind('rbac.authorization.k8s.io/v1', 'RoleBinding');
/** A `rbac.authorization.k8s.io/v1` RoleBinding object. */
export type RoleBinding = rbac.RoleBinding;

/** The `policy/v1` PodDisruptionBudget kind. */
export const PodDisruptionBudget: Kind<policy.PodDisruptionBudget> = defineKind('policy/v1', 'PodDisruptionBudget');
/** A `policy/v1` PodDisruptionBudget object. */
export type PodDisruptionBudget = policy.PodDisruptionBudget;

//! Objects of kinds known only at run time, decoded into the host's own types: the macro that
//! makes such a type a kube `Resource`, so a watch can decode into it.

/// Implements kube's `Resource` for `$ty`, an object of a kind known only at run time (by its
/// `ApiResource`, as for a `DynamicObject`) whose metadata is at `self.$meta`: what lets a watch
/// decode objects into a type of the host's own, which reads only what it needs.
macro_rules! dynamic_resource {
    ($ty:ty, $($meta:ident).+) => {
        impl kube::core::Resource for $ty {
            type DynamicType = kube::core::ApiResource;
            type Scope = kube::core::DynamicResourceScope;

            fn kind(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                dt.kind.as_str().into()
            }
            fn group(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                dt.group.as_str().into()
            }
            fn version(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                dt.version.as_str().into()
            }
            fn api_version(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                dt.api_version.as_str().into()
            }
            fn plural(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                dt.plural.as_str().into()
            }
            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.$($meta).+
            }
            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.$($meta).+
            }
        }
    };
}
pub(crate) use dynamic_resource;

-- Argo CD health of a one-shot change (OffsetReset), from the conditions kafka-offset-operator writes
-- (docs/gitops.md). While the operator still works on it (a retry, a blocked restore, a group that still has
-- members) it is Progressing; waiting for spec.approved it is Suspended; only a problem a person must clear
-- is Degraded.
-- Written by `scripts/dev.sh generate` from integrations/argocd/health/one-shot.lua and conditions.lua:
-- edit those, then run it.
local hs = {}

local function condition(type)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local generation = obj.metadata.generation
local observed = obj.status ~= nil and obj.status.observedGeneration or nil
if condition("Ready") == nil or (generation ~= nil and observed ~= nil and observed < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile the latest spec"
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end

local ready = condition("Ready")
local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = reconciling.message
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end
if ready.reason == "AwaitingApproval" then
  hs.status = "Suspended"
  hs.message = ready.message
  return hs
end
hs.status = "Progressing"
hs.message = ready.message
return hs

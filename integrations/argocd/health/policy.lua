-- Argo CD health of a ConsumerGroupOffsetPolicy, from the conditions kafka-offset-operator writes
-- (docs/gitops.md). A policy runs for ever, like a Deployment: a failing run makes it Degraded (the operator
-- retries), a spec it cannot run too; Healthy after a successful run of the latest spec.

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end

local degraded = condition("Degraded")
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = degraded.message
  return hs
end

local ready = condition("Ready")
local generation = obj.metadata.generation
local observed = obj.status ~= nil and obj.status.observedGeneration or nil
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the first analysis run"
  return hs
end
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for a run of the latest spec"
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end
hs.status = "Progressing"
hs.message = ready.message
return hs

import { Injectable } from '@nestjs/common';
import type { OperationFeature } from './operation-feature';

/** The operations this service can run, each with the feature that registered it. */
@Injectable()
export class FeatureRegistry {
  private readonly features = new Map<string, OperationFeature>();

  register(feature: OperationFeature): void {
    const existing = this.features.get(feature.operationId);
    if (existing !== undefined && existing !== feature) {
      throw new Error(`Operation "${feature.operationId}" is already registered by another feature`);
    }
    this.features.set(feature.operationId, feature);
  }

  get(operationId: string): OperationFeature | undefined {
    return this.features.get(operationId);
  }

  operationIds(): string[] {
    return [...this.features.keys()];
  }
}
